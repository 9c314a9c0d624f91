# Runs Debian's Redmine (/usr/share/redmine) for the tests, in one Ruby process, on loopback.
#
#   ruby redmine-server.rb prepare FACTS.json   migrate an empty database, load Redmine's
#                                              default data (English), add the tests' people,
#                                              project and fields, write their ids to FACTS.json
#   ruby redmine-server.rb serve               serve on 127.0.0.1 and a port the kernel picks;
#                                              prints "listening PORT", then one "hit METHOD URI"
#                                              line per request
#
# REDMINE_INSTANCE points Debian's multi-tenant layout at the caller's instance folder (config/
# database.yml, config/secret_key.txt, files/, log/, tmp/): see redmine.ts.
#
# WEBrick is loaded before Bundler: Debian packages it as a gem outside Redmine's Gemfile, and
# Bundler would hide it. (Debian ships no Puma or Thin here, and `rails server` needs one of them
# in the bundle.)
require 'webrick'
require 'json'

mode = ARGV[0]
ENV['RAILS_ENV'] = 'production'
require '/usr/share/redmine/config/environment'

def seed!(facts_path)
  Rails.application.load_tasks
  ActiveRecord::Migration.verbose = false
  Rake::Task['db:migrate'].invoke
  # The models were loaded (eager loading) before their tables existed.
  ActiveRecord::Base.descendants.each(&:reset_column_information)
  ENV['REDMINE_LANG'] = 'en'
  Rake::Task['redmine:load_default_data'].invoke

  Setting.rest_api_enabled = '1'
  Setting.login_required = '1'
  Setting.default_language = 'en'
  Setting.text_formatting = 'textile'
  Setting.gravatar_enabled = '0'
  Setting.default_issue_start_date_to_creation_date = '0'
  # Dates as the input writes them, on pages as in forms.
  Setting.date_format = '%Y-%m-%d'

  password = 'redmine-Pa55word'
  admin = User.find_by_login('admin')
  admin.password = admin.password_confirmation = password
  admin.must_change_passwd = false
  admin.save!

  project = Project.create!(name: 'Operations', identifier: 'ops', is_public: false)
  project.trackers = Tracker.all.to_a
  project.enabled_module_names = %w(issue_tracking time_tracking)
  project.save!
  %w(1.0 1.1 2.0).each { |name| Version.create!(project: project, name: name) }
  %w(Backend Frontend Billing).each { |name| IssueCategory.create!(project: project, name: name) }

  manager = Role.find_by(name: 'Manager')
  developer = Role.find_by(name: 'Developer')
  # More than 20 members: Redmine then lists no watcher check boxes on the new issue form, and
  # a watcher is added through the "Search for watchers to add" dialog.
  people = [%w(alice Alice Smith)] + [
    %w(kmensah Kofi Mensah), %w(aowusu Ama Owusu), %w(kboateng Kwame Boateng), %w(kosei Kofi Osei),
    %w(aasante Abena Asante), %w(yadjei Yaw Adjei), %w(efrimpong Efua Frimpong), %w(kappiah Kojo Appiah),
    %w(nmensah Nana Mensah), %w(aboakye Akosua Boakye), %w(kdarko Kwabena Darko), %w(aagyeman Adwoa Agyeman),
    %w(ytetteh Yaa Tetteh), %w(kamoah Kwesi Amoah), %w(eowusu Esi Owusu), %w(kansah Kweku Ansah),
    %w(aquaye Afua Quaye), %w(kbaah Kobina Baah), %w(aaddo Akua Addo), %w(pnkrumah Paa Nkrumah),
    %w(gadu Gifty Adu), %w(mlarbi Mawuli Larbi), %w(ssarpong Selorm Sarpong), %w(tbekoe Teni Bekoe),
  ]
  users = {}
  people.each do |login, first, last|
    user = User.new(firstname: first, lastname: last, mail: "#{login}@example.test", language: 'en')
    user.login = login
    user.password = user.password_confirmation = password
    user.status = User::STATUS_ACTIVE
    user.save!
    # No watching of issues one edits: a record then has exactly the watchers the input names.
    user.pref.auto_watch_on = []
    user.pref.save!
    Member.create!(principal: user, project: project, roles: [login == 'alice' ? manager : developer])
    users[login] = { id: user.id, name: user.name }
  end

  all_trackers = Tracker.all.to_a
  field = lambda do |name, format, extra = {}|
    IssueCustomField.create!({ name: name, field_format: format, is_for_all: true, trackers: all_trackers, visible: true }.merge(extra)).id
  end
  fields = {
    'Customer reference' => field.('Customer reference', 'string'),
    'Customer notes' => field.('Customer notes', 'text'),
    'Affected users' => field.('Affected users', 'int'),
    'Budget' => field.('Budget', 'float'),
    'Deadline' => field.('Deadline', 'date'),
    'Billable' => field.('Billable', 'bool', edit_tag_style: 'check_box'),
    'Severity' => field.('Severity', 'list', possible_values: %w(Minor Major Critical)),
    'Platforms' => field.('Platforms', 'list', possible_values: %w(Linux macOS Windows), multiple: true, edit_tag_style: 'check_box'),
    'Region' => field.('Region', 'list', possible_values: %w(EMEA Americas APAC), edit_tag_style: 'check_box'),
    'Reviewer' => field.('Reviewer', 'user'),
    'Fixed in' => field.('Fixed in', 'version'),
    'Runbook' => field.('Runbook', 'link'),
  }

  File.write(facts_path, JSON.pretty_generate(
    password: password,
    adminApiKey: admin.api_key,
    project: { id: project.id, identifier: project.identifier },
    users: users,
    trackers: Tracker.all.map { |t| [t.name, t.id] }.to_h,
    customFields: fields,
  ))
end

case mode
when 'prepare'
  seed!(ARGV[1] || raise('prepare needs the path of the facts file'))
when 'serve'
  access = Object.new
  def access.<<(line)
    $stdout.write(line)
    $stdout.flush
  end
  server = WEBrick::HTTPServer.new(
    BindAddress: '127.0.0.1',
    Port: 0,
    Logger: WEBrick::Log.new($stderr, WEBrick::Log::WARN),
    AccessLog: [[access, 'hit %m %U']],
  )
  server.mount('/', Rack::Handler::WEBrick, Rails.application)
  %w(TERM INT).each { |signal| trap(signal) { server.shutdown } }
  $stdout.puts "listening #{server.listeners.first.addr[1]}"
  $stdout.flush
  server.start
else
  abort "usage: #{$PROGRAM_NAME} prepare FACTS.json | serve"
end
